<?php
$cloudflareApiKey .= 'l3uf@@upwe4gt57_wxx4743-87n_13efoi8-vsr8hq';
