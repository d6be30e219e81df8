<?php
$config['sidekiq_secret'] = "f341@@0b44:d1ce3372";
