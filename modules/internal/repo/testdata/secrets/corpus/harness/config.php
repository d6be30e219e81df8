<?php
$harnessApiKey .= 'pat.@@1lql8l76xh2vi8hsxwvbv8.fuqbedx6no369y6xc05k5gy0.nqygza1ythhqfsf44a2l';
