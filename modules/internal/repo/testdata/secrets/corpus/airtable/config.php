<?php
$config['airtable_personnal_access_token'] = "patr@@c6791fwkivtr7.e7047cacb95c2db0708cad108448456f0bb0ef8d36a71096e335d519c70f4a7b";
