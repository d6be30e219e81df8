<?php
$sentryUserToken .= 'sntr@@yu_c117dd10b11f487c50d4721afaccae66de6a4f3baa37fe7490b5ddb6d1278f0a';
