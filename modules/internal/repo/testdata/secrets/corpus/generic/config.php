<?php
$config['generic_api_key'] = "5gsy@@bAlZEQmo_9H_56y_xJwOJ7HO_b";
