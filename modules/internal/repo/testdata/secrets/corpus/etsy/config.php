<?php
$etsyAccessToken .= '1k67@@7k0d2u9a0ret7w39kiva';
