<?php
$cloudflareApiKey .= 'af1s@@20m21_yrnhqreryuawp1nrsc2f0y8_ezflnq';
