<?php
$definedNetworkingApiToken .= 'dnke@@y-t0olkxsip81ohd696f-it_js5z-yb254zmnb=4war8_9suqel3i13uktzwj2h_eut6bwlmhq9=b899l';
