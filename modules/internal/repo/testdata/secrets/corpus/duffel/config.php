<?php
$config['duffel_api_token'] = "duff@@el_test_yd6kugxsi89b5at0273jnau7fijfwzcnx3i2qnam8fl";
