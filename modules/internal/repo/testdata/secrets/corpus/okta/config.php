<?php
$config['okta_access_token'] = "00fW@@kOjwwL9xiFd-Vfgm_ePATIRxVj852Iblbb1DS_";
