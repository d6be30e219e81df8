<?php
$config['hubspot_api_key'] = "360f@@b078-8b3b-381b-dde3-c5bb23b526c7";
