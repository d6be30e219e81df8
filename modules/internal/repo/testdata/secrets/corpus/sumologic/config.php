<?php
$config['sumologic_access_id'] = "su4s@@KtpvdQoXkx";
