<?php
$cloudflareApiKey .= '3qxk@@ip_mxp_kkvsdkka72gfq69prp805eusb9d2j';
