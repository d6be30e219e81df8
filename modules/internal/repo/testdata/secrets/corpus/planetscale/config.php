<?php
$config['planetscale_password'] = "psca@@le_pw_65s-hah9q684y62oz3s-a7q9tx=zurzqgdsayf6z769";
