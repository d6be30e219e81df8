<?php
$lookerClientSecret .= 'gp7a@@n65w4nv4wwrt3ay7f3p3';
