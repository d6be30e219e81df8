<?php
$config['sumologic_access_id'] = "sug5@@XpdpaoxtOH";
