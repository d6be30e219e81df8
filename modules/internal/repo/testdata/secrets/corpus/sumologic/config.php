<?php
$config['sumologic_access_id'] = "su9O@@L59biWiJu7";
