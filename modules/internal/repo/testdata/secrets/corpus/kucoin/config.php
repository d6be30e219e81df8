<?php
$config['kucoin_access_token'] = "16e7@@9ca5ccad79aab0c76939";
