<?php
$settlemintApplicationAccessToken .= 'sm_a@@at_k1zk5nf8jyievcr5';
