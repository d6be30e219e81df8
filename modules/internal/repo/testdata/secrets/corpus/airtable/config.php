<?php
$config['airtable_personnal_access_token'] = "patm@@2e1knz5o5kr6r.834a31f03e704e0d04257760eec251ac34ded82b1be0c5eb1728c4a1ec6bf9bb";
