<?php
$lobPubApiKey .= 'test@@_pub_2e8d50b1f927b4a8860cc7f1b383023';
