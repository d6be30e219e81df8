<?php
$config['cisco_meraki_api_key'] = "86fe@@e57b2bf4fd6c1c99a7386eb4c21cfca27e60";
