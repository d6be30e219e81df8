<?php
$sourcegraphAccessToken .= 'sgp_@@local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42';
