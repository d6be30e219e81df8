<?php
$config['duffel_api_token'] = "duff@@el_test_6kq7ch-371dqx5b53ssg91n48r5gjdyvwg9=w=49fy-";
