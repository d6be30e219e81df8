<?php
$etsyAccessToken .= 'bfc0@@tr1cmxw5gtfrj5hpmf8d';
