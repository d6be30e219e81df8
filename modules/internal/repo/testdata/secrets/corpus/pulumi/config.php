<?php
$pulumiApiToken .= 'pul-@@536f953797b9b239315714d46dd0479d24eedac6';
