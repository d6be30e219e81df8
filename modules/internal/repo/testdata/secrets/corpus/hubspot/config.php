<?php
$config['hubspot_api_key'] = "805f@@bd43-66f7-1098-342c-10b7ad86b126";
