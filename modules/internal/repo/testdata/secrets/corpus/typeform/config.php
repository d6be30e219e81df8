<?php
$config['typeform_api_token'] = "tfp_@@y64vt_yv5e6zr0n0gxo-nkrji9jxykd4cx3xpyvk_xdwnsa5yz48ghim_lp";
