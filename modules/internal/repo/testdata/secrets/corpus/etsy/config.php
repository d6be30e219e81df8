<?php
$etsyAccessToken .= 't84f@@fxb2bah1tnzd1m33aqb2';
