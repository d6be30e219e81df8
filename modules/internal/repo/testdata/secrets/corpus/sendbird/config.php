<?php
$config['sendbird_access_token'] = "74df@@471e37c00ffdfccd5f5bb9280e7d9069bade";
