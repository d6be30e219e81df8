<?php
$config['cohere_api_token'] = "f0gy@@9foRPDHqwVL56NfnfxqhMOqGKzLaeo7G2IcC";
