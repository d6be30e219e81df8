<?php
$cloudflareApiKey .= 'ipz0@@cnojqz6q3hycrn_xothpl1jh9j6w4x5ypucs';
