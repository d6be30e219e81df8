<?php
$definedNetworkingApiToken .= 'dnke@@y-1rg-=oj=q-2s4de-8l-_knpdeg-uj3sg=d1=h=wgnu1wht_8o-kkdmot2oe-khlxdva3_xvoz_3ncd8';
