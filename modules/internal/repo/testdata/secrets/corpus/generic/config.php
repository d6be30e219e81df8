<?php
$config['generic_api_key'] = "crtT@@C0aQS0w18C27h-XziQH4s2aOcs";
