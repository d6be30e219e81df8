<?php
$definedNetworkingApiToken .= 'dnke@@y-ysfwxt_t-whmypk-j-4mid5jxo-hp21_b84rzi8pq5zw28zv5hjt0l067u1mqda3qrye_0sz_hfulna';
