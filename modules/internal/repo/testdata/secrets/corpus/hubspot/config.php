<?php
$config['hubspot_api_key'] = "89f2@@ac15-42fe-bd44-c65f-c6ad75edcc30";
