<?php
$etsyAccessToken .= 'k7ji@@4p5b1bxrc2xrh6pmbrrm';
