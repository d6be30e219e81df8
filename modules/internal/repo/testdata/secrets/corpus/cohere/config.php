<?php
$config['cohere_api_token'] = "DuM4@@Oysl5uEGuFoVRGiRToVWS9sGcrEoHbe7VCp9";
