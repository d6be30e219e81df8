<?php
$config['planetscale_password'] = "psca@@le_pw_l==s9rabotbfuh98keu40411va9gmqwc";
