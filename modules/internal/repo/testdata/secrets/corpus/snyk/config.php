<?php
$config['snyk_api_token'] = "1234@@5678-ABCD-ABCD-ABCD-1234567890AB";
