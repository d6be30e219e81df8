<?php
$config['okta_access_token'] = "00eb@@Obu4zSNkyc6dimLvUwq4KpTEop-PCEnnfSTpD3";
