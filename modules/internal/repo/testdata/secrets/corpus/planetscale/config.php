<?php
$config['planetscale_password'] = "psca@@le_pw_gfh7otf8rcbhxy6jcj3a9t2_8tty=_fo1as_8vqqnbbu8ib=x6c0xn_f27-1rhx=";
