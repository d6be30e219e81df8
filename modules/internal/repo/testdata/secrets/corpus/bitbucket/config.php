<?php
$config['bitbucket_client_id'] = "z8yw@@mqsva2vvuhkwbrkkh0okc6t9dtwk";
