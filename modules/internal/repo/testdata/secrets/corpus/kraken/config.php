<?php
$config['kraken_access_token'] = "qrgh@@h68u=_+hbg/=m7qbof25m7rjgnum9/7b-cpp080szr5p3e0dyx/pylezfdkxyiylr8q7poost0ee";
