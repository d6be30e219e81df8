<?php
$config['duffel_api_token'] = "duff@@el_test_4mp6hw5-e_hesxtrt=n34-lf=5i5kciraupy-p46h9v";
