<?php
$config['planetscale_password'] = "psca@@le_pw_peevu2mdk_gyp6ulcg5=kpc-shserhdl";
