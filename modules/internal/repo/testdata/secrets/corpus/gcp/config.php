<?php
$config['gcp_api_key'] = "AIza@@Z5w8mjpG6cijlztDjFRTjj8C_6L7Rjc_0Mi";
