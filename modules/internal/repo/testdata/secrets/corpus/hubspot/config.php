<?php
$config['hubspot_api_key'] = "8043@@0a8e-e30b-949e-639a-54e100764086";
