<?php
$config['duffel_api_token'] = "duff@@el_test_ees06p8v=v_42_d5n54hn_htjc60acn6551x8bmeg6q";
