<?php
$lobPubApiKey .= 'test@@_pub_2180b965f4e3724c13f7aa954ddfc30';
