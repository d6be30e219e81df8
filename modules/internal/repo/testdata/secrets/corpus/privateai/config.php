<?php
$privateaiApiToken .= '716i@@q7uxvt3t6vvwwwz5k39w3khli8tw';
