<?php
$config['sidekiq_secret'] = "cf92@@90b6:0f0bdc25";
