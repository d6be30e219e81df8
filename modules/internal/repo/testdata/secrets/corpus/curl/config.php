<?php
$curlAuthHeader .= 'cfca@@bd11c7ed9a41b1a3e063c32d5114';
$config['curl_auth_header'] = "Sk94@@HG7f6KB";
