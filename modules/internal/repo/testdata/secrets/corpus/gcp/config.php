<?php
$config['gcp_api_key'] = "AIza@@H48ollm2P8GAkFNQ3-nggfpxwifSl_YMEMP";
