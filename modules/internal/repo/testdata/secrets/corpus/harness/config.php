<?php
$harnessApiKey .= 'pat.@@7tefq5af975p4wypjj8hzv.ek7xm8sc6kj193qf5eli5ybs.w88y13x7w5mx8qpvsh1x';
