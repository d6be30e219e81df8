<?php
$settlemintPersonalAccessToken .= 'sm_p@@at_i959z35x2ub9oi04';
