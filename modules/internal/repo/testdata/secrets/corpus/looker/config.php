<?php
$lookerClientId .= 'l375@@qfitct0eopaps1ur';
